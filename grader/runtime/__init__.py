"""The worker's runtime: copied beside every submission, the only grader code that runs with it."""
