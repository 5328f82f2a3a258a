"""What every room needs and that knows nothing of planning: the error classes, atomic files,
standard output, progress bars. Imports no other albic room."""
