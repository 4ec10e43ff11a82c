"""Patient-to-trial matching: the patient's conditions from text, a trial's relevance and the ranking."""
