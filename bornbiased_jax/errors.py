"""The project's one exception type for bad input.

``UserError`` marks a problem with what a user gave: a path, a flag, a file, a model source. The
command line prints its message as ``bornbiased: error: ...`` and exits with status 2. Any other
exception is a bug in this project and keeps its traceback. It subclasses ``ValueError`` so that
library callers catching ``ValueError`` keep working.
"""


class UserError(ValueError):
    """Bad input: the message says what was wrong and what is allowed."""
