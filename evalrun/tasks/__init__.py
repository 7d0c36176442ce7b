"""Task suites: loading a folder into `Task`s (`loader`), the `TaskFormat` seam every format maps
onto (`base`), evalrun's own format (`native`), Harbor / Terminal-Bench (`harbor/`), behaviour
probes (`probes/`), and the static checks of a task's own scripts (`lint`). Everything after
loading talks to the `TaskFormat` protocol, never to a format by name."""
