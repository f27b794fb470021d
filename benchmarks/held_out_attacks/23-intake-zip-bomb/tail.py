# the reference, unchanged: the attack is the zip around it (the runner adds a 4 GiB member of zeros)
