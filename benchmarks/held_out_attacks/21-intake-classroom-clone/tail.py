# the reference, unchanged: the attack is the folder around it (the runner adds .git/ and venv/, 2,500 files each)
