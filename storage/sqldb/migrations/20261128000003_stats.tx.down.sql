DROP INDEX schedule_messages_status;
