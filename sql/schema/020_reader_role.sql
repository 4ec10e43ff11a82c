-- Role `trial_reader` for the SQL console: may read schema ctgov and nothing else, cannot log in. Idempotent.
-- Each step sits in its own block that turns a missing privilege (no CREATEROLE, tables owned by
-- someone else) into a NOTICE, so the schema still applies; the console then reports that only its
-- READ ONLY transaction and the guard protect the data (services/console.py reads the result).
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'trial_reader') THEN
        BEGIN
            CREATE ROLE trial_reader NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT NOREPLICATION
                NOBYPASSRLS;
        EXCEPTION
            WHEN insufficient_privilege THEN
                RAISE NOTICE 'trial_reader not created (%); the SQL console relies on its READ ONLY transaction', SQLERRM;
                RETURN;
            WHEN duplicate_object THEN
                NULL;  -- another process created it a moment ago
        END;
    END IF;

    -- Read-only, time-limited and small by default, in case anyone ever lets it log in. (The console switches to
    -- the role with SET ROLE, which reads none of these: it sets the same limits on its own transactions,
    -- services/console.py.)
    BEGIN
        ALTER ROLE trial_reader SET default_transaction_read_only = on;
        ALTER ROLE trial_reader SET statement_timeout = '30s';
        ALTER ROLE trial_reader SET work_mem = '4MB';
    EXCEPTION
        WHEN insufficient_privilege THEN
            RAISE NOTICE 'trial_reader defaults not set (%)', SQLERRM;
    END;
    -- A superuser's setting: only a superuser (or, from PostgreSQL 15, a user granted SET on it) may give it.
    BEGIN
        ALTER ROLE trial_reader SET temp_file_limit = '500MB';
    EXCEPTION
        WHEN insufficient_privilege THEN
            RAISE NOTICE 'trial_reader temp_file_limit not set (%)', SQLERRM;
    END;

    -- SELECT on the trial tables (and views) only; any write privilege granted earlier is taken back.
    BEGIN
        GRANT USAGE ON SCHEMA ctgov TO trial_reader;
        GRANT SELECT ON ALL TABLES IN SCHEMA ctgov TO trial_reader;
        REVOKE INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER ON ALL TABLES IN SCHEMA ctgov FROM trial_reader;
        REVOKE CREATE ON SCHEMA ctgov FROM trial_reader;
        ALTER DEFAULT PRIVILEGES IN SCHEMA ctgov GRANT SELECT ON TABLES TO trial_reader;
    EXCEPTION
        WHEN insufficient_privilege THEN
            RAISE NOTICE 'trial_reader not granted SELECT on ctgov (%)', SQLERRM;
    END;

    -- The connecting user must be able to SET ROLE trial_reader inside the console's transaction.
    -- From PostgreSQL 16 membership and SET are separate (a CREATEROLE creator holds ADMIN only), and
    -- INHERIT FALSE keeps the reader's grants from leaking into the app user's own privileges.
    BEGIN
        IF current_setting('server_version_num')::int >= 160000 THEN
            IF NOT pg_has_role(current_user, 'trial_reader', 'SET') THEN
                EXECUTE format('GRANT trial_reader TO %I WITH SET TRUE, INHERIT FALSE', current_user);
            END IF;
        ELSIF NOT pg_has_role(current_user, 'trial_reader', 'MEMBER') THEN
            EXECUTE format('GRANT trial_reader TO %I', current_user);
        END IF;
    EXCEPTION
        WHEN insufficient_privilege THEN
            RAISE NOTICE '% cannot switch to trial_reader (%)', current_user, SQLERRM;
    END;
END
$$;
