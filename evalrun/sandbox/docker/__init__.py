"""`sandbox=docker`: one container per sample (`backend`), the agent's layer under every
image (`layers`), task images built or pulled (`images`)."""
