"""The instructor's tools: `grader build`, `grader validate`, trivial answers, the mistakes corpus."""
