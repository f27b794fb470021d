"""`grader batch`: a class's submissions graded by many `grader grade` children, here or on a cluster."""
