"""The statistical core: definitions, designs, mechanisms, estimators, crosstabs, planning, codebook and words.

Pure: it imports neither Flask nor the database and does no I/O (``tests/test_layers.py``).
The store, the web application and the command line build on it; it builds on nothing of theirs.
"""
