DROP TABLE portal_certificates;
--bun:split
DROP TABLE portal_sick_leaves;
--bun:split
DROP TABLE portal_leave_requests;
--bun:split
DROP TABLE portal_login_flows;
--bun:split
DROP TABLE portal_magic_links;
--bun:split
DROP TABLE portal_sessions;
--bun:split
DROP TABLE portal_compensation;
--bun:split
DROP TABLE portal_users;
--bun:split
DROP TABLE portal_employees;
