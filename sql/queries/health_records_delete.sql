-- Delete one session's uploaded health records ("Remove my health records"). Parameters: :token.
DELETE FROM app.health_records WHERE token = :token
