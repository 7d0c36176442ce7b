"""`sandbox=bwrap`: bubblewrap namespaces per command (`backend`), memory cgroups (`cgroup`)."""
