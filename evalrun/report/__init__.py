"""Reports of a finished run: the terminal report here, files (JSON, HTML, JUnit) beside it."""
