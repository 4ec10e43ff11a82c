-- Whether the stored search documents (app.study_search) can be read: built, and built no earlier than the term
-- dictionary (app.terms, stamped terms_refreshed_at) whose ids they hold. An import rebuilds both in one
-- transaction, so their stamps are equal; a dictionary rebuilt on its own leaves them stale, and the relevance
-- order then makes the documents on the fly.
-- Params: none. Output: one boolean.
SELECT to_regclass('app.study_search') IS NOT NULL AND to_regclass('app.meta') IS NOT NULL
   AND EXISTS (
       SELECT 1 FROM app.meta s
       WHERE s.key = 'search_refreshed_at'
         AND s.value::timestamptz >= coalesce(
             (SELECT t.value::timestamptz FROM app.meta t WHERE t.key = 'terms_refreshed_at'), s.value::timestamptz))
