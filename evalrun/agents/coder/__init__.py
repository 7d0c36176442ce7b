"""`agent=coder`: the pydantic-ai coding agent (`agent`), its sandbox tools (`tools`), its model
(`model`, `gemini`)."""
