"""Medical vocabularies as data: MeSH 2024 descriptors, entry terms, tree numbers and drug actions."""
