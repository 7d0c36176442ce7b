"""Terminal output, one way: text that comes from outside evalrun is never read as markup.

Every console evalrun prints on is made here, with rich markup and highlighting off, so a string
printed as it is - a task id, a path, a task.toml key such as `[metadata] 'reward_type'`, an
exception's message, a verifier's output - appears exactly as written, brackets and all.
Styling is explicit: `styled(template, *values)` reads `template` (a literal in evalrun's own
source) as rich markup and escapes every value formatted into it, so a value cannot open or
close a style either.

```python
console = make_console(stderr=True)
console.print(styled("[red]error:[/] {}", exc))     # the message printed verbatim, in any case
console.print(f"skipped {task_id}: {reason}")       # plain text: printed verbatim
```
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.text import Text

WIDE = 140  # columns for tables when output is not a terminal (CI logs, pipes)


def make_console(*, stderr: bool = False, wide: bool = False, **kwargs: Any) -> Console:
    """A console that prints strings verbatim (markup and highlighting off).

    `wide`: when the output is not a terminal, at least `WIDE` columns so tables do not wrap.
    """
    options = {"stderr": stderr, "markup": False, "highlight": False, **kwargs}
    console = Console(**options)
    if wide and not console.is_terminal and "width" not in kwargs:
        console = Console(width=max(console.width, WIDE), **options)
    return console


def styled(template: str, *values: object) -> Text:
    """`template` (evalrun's own rich markup, `{}` for each value) with `values` escaped in."""
    return Text.from_markup(template.format(*(escape(str(v)) for v in values)))
