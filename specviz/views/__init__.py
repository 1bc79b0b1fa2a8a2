"""Numbers and traces -> what people see: figures, the rows' HTML, the stats text, exported pages, the CLI's
lines, and the gallery of recorded runs."""
