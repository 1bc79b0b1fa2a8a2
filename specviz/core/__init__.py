"""The pure maths at the bottom of the stack: sampling, the accept/reject step for chains and trees, the
acceptance rules, and the closed-form theory. No models, no devices, no state."""
