"""What the pages show: filters, the counting engine, statistics, charts, the map and the trial list."""
