"""optlab-kit: the autograder kit of the optimizing-agents lab (manifest, stubs, grading, packaging)."""

__version__ = "0.1.0"
