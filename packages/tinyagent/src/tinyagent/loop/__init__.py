"""The agent loop: query the model, run tools, check limits, save after every turn."""
