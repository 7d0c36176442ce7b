"""Task formats: each module knows one on-disk task layout and maps it onto the same `Task`.

`native` is evalrun's own format (task.yaml, setup/, verify/, solution/, wrong/); `harbor` is the
Harbor / Terminal-Bench 2.0 format (task.toml, instruction.md, environment/, tests/, solution/).
`evalrun.tasks` recognises a folder's format by its files and is the only caller of the loaders;
everything after loading talks to the `TaskFormat` protocol in `base`, never to a format by name.
"""
