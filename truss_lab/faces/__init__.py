"""What a researcher touches: the CLI, displays, widgets, notebook helpers, the demo."""
