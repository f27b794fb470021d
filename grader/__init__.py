"""optlab-kit: the autograder kit of the optimizing-agents lab (manifest, stubs, grading, packaging)."""
