# no code: the runner lays out a folder whose optimization_toolkit.py is a symbolic link to the kit's reference
