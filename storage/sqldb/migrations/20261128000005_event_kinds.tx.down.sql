DROP INDEX events_kind_id;
