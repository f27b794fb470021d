# the honest reference, unchanged
