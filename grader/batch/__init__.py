"""`grader batch`: a class graded by many `grader grade` children, here or on a cluster, for the TAs."""
