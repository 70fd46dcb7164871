--
-- CREATE EXTENSION refuses an object it would otherwise adopt (PostgreSQL's
-- rules for extension scripts, CVE-2022-2625): a schema taskq somebody
-- prepared, a role with a taskq role's name that is not taskq's.  Run in a
-- fresh database.
--
SELECT current_database() AS home \gset
CREATE DATABASE regress_taskq_install;
CREATE ROLE regress_squatter LOGIN;
GRANT CREATE ON DATABASE regress_taskq_install TO regress_squatter;
\c regress_taskq_install
\set VERBOSITY default
-- The errors' messages, details and hints without their CONTEXT: from 18 on,
-- PostgreSQL adds the statement of the extension script and its line to it.
\set SHOW_CONTEXT never

-- An unprivileged role prepares schema taskq with a function of the API's
-- name in it: the extension would run its script in that schema and
-- callers would find the squatter's function.  CREATE EXTENSION fails.
SET SESSION AUTHORIZATION regress_squatter;
CREATE SCHEMA taskq;
CREATE FUNCTION taskq.insert_tasks(tasks jsonb) RETURNS bigint
    LANGUAGE sql AS 'SELECT 0::bigint';
RESET SESSION AUTHORIZATION;
CREATE EXTENSION taskq;
SELECT count(*) AS installed FROM pg_extension WHERE extname = 'taskq';
SELECT n.nspowner::regrole AS owner, count(p.oid) AS functions
  FROM pg_namespace AS n LEFT JOIN pg_proc AS p ON p.pronamespace = n.oid
 WHERE n.nspname = 'taskq' GROUP BY n.nspowner;
-- The same for an empty schema, even the installer's own.
DROP SCHEMA taskq CASCADE;
CREATE SCHEMA taskq;
CREATE EXTENSION taskq;
DROP SCHEMA taskq;

-- A role of a taskq role's name that is not marked as taskq's (another
-- application's, or one prepared to collect taskq's privileges): refused.
-- (The roles exist in this cluster already; the transaction unmarks one.)
BEGIN;
COMMENT ON ROLE taskq_monitor IS 'monitoring of another application';
CREATE EXTENSION taskq;
ROLLBACK;
BEGIN;
COMMENT ON ROLE taskq_worker IS NULL;
CREATE EXTENSION taskq;
ROLLBACK;

-- Marked roles are taskq's: a second database uses them.  The schema is
-- the extension's own and goes with it.
CREATE EXTENSION taskq;
SELECT e.extname, n.nspname AS schema, d.deptype
  FROM pg_extension AS e
  JOIN pg_depend AS d ON d.refclassid = 'pg_extension'::regclass AND d.refobjid = e.oid
                     AND d.classid = 'pg_namespace'::regclass
  JOIN pg_namespace AS n ON n.oid = d.objid
 WHERE e.extname = 'taskq';
DROP EXTENSION taskq;
SELECT count(*) AS taskq_schemas FROM pg_namespace WHERE nspname = 'taskq';
-- The roles are cluster-wide and stay.
SELECT count(*) AS taskq_roles FROM pg_roles WHERE rolname LIKE 'taskq\_%';

-- Versions: every released version stays installable (0.1 from its own
-- script, the later ones as 0.1 and the update scripts), and ALTER
-- EXTENSION taskq UPDATE from each is tested in test/t/011_upgrade.pl.
SELECT version, superuser, trusted, relocatable, schema
  FROM pg_available_extension_versions WHERE name = 'taskq' ORDER BY version;

\c :home
DROP DATABASE regress_taskq_install;
DROP ROLE regress_squatter;
