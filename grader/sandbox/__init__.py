"""The grader's end of a worker, and the operating system's layers around it."""
