# include: victim.py

