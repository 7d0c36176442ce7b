"""Off-the-shelf agent CLIs: one module each here (a subclass of
`evalrun.agents.installed.InstalledAgent`) and one YAML each in conf/agent/. Adding an agent is
one new module here and one YAML there."""
