"""What the user reads: text, Markdown, JSON, plots, and the launch commands."""
