"""The instructor's side of the course: nbgrader, configured for this repository.

``python -m autograder generate`` regenerates ``exercises/`` from ``solutions/``;
``python -m autograder grade ASSIGNMENT --submissions DIR --out DIR`` grades a class.
nbgrader does the work (cell metadata, checksums, hidden tests, gradebook,
feedback, export); this package adds what it lacks around it.
"""
