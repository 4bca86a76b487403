-- Twin of ../0092_insertion_order.sql: a sequence fills seq.
ALTER TABLE deployments ADD COLUMN seq BIGSERIAL;
ALTER TABLE payment_events ADD COLUMN seq BIGSERIAL;
