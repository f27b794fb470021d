"""What leaves the kit for others: the autograder zip and the student handout."""
