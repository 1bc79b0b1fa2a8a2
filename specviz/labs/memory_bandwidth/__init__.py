"""The Memory bandwidth tab: why a forward over k tokens costs about as much as over one, and this machine's own."""
