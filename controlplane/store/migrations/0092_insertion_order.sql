-- seq orders deployments and payment events in insertion order where
-- created_at ties (it replaces ORDER BY rowid, which PostgreSQL has not).
-- A trigger fills it, so the inserts need not name it.
ALTER TABLE deployments ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;
UPDATE deployments SET seq = rowid;
CREATE TRIGGER deployments_seq AFTER INSERT ON deployments BEGIN
	UPDATE deployments SET seq = NEW.rowid WHERE rowid = NEW.rowid;
END;
ALTER TABLE payment_events ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;
UPDATE payment_events SET seq = rowid;
CREATE TRIGGER payment_events_seq AFTER INSERT ON payment_events BEGIN
	UPDATE payment_events SET seq = NEW.rowid WHERE rowid = NEW.rowid;
END;
