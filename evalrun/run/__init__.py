"""Running a plan: the plan (`plan`), the whole run as a function (`runner`), bounded concurrency,
retries and signals (`engine`), one sample's life as a `Trial` with a method per phase (`trial`),
the workspace diff, progress and LLM judges."""
