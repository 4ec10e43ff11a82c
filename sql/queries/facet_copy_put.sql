-- One piece of one file of a start-cache copy (services/dashboard/facetcopy.py). Params: key, name, part, data.
INSERT INTO app.facet_copy (key, name, part, data) VALUES (:key, :name, :part, :data)
