"""The data underneath: the database door, the embedded server, imports, normalisation and geography."""
