"""Training the distilled draft for the offline target: prompts, data, training and agreement checks."""
