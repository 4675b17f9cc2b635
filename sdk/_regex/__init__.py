"""The regex engine: ECMA-262 patterns (JSON Schema's ``pattern``) read and compiled for
Python, its Unicode properties, a linear-time matcher where one can decide, and every match run
under a time budget."""
