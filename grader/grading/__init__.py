"""`grader grade`: one submission from intake to results.json, and a student's local verdict."""
