"""Running a plan: the plan (`plan`), the whole run as a function (`runner`), bounded concurrency
and signals (`engine`), one sample's turns and grading (`turns`, `grading`), the workspace diff,
progress and LLM judges."""
