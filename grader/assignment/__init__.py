"""The lab as the kit reads it: exercises, reference, promises, points and the suites' inventory."""
