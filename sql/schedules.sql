--
-- Schedules: taskq.schedule, taskq.unschedule, the view taskq.schedules,
-- and the next tick of cron expressions (taskq._cron_next) against a table
-- of ticks worked out by hand from the calendar.  The background worker is
-- off in this suite, so nothing fires (firing, catch_up and exactly once
-- across crashes and failover: test/t/032_schedules.pl).
--
SET timezone = 'UTC';

-- The next tick after an instant: every expected value below was read off
-- the calendar (weekdays, leap years, the 2026 DST changes of Europe/Berlin,
-- 29 March 02:00 CET -> 03:00 CEST = 01:00 UTC and 25 October 03:00 CEST ->
-- 02:00 CET = 01:00 UTC, and America/New_York, 8 March 02:00 EST -> 03:00
-- EDT = 07:00 UTC and 1 November 02:00 EDT -> 01:00 EST = 06:00 UTC).
CREATE TEMP TABLE cron_cases (n serial, cron text, tz text, after timestamptz,
                              expected timestamptz, why text);
INSERT INTO cron_cases (cron, tz, after, expected, why) VALUES
 ('0 0 29 2 *', 'UTC', '2025-01-01 00:00Z', '2028-02-29 00:00Z', 'leap day: the next leap year'),
 ('0 0 29 2 *', 'UTC', '2028-02-29 00:00Z', '2032-02-29 00:00Z', 'leap day: strictly after'),
 ('0 0 29 2 *', 'UTC', '2096-03-01 00:00Z', '2104-02-29 00:00Z', 'leap day: 2100 is no leap year'),
 ('0 0 31 * *', 'UTC', '2026-01-31 00:00Z', '2026-03-31 00:00Z', 'month end: February has no 31st'),
 ('0 0 31 * *', 'UTC', '2026-03-31 00:00Z', '2026-05-31 00:00Z', 'month end: April has no 31st'),
 ('59 23 31 12 *', 'UTC', '2026-06-01 00:00Z', '2026-12-31 23:59Z', 'last minute of the year'),
 ('0 0 30 2 *', 'UTC', '2026-01-01 00:00Z', NULL, '30 February never comes'),
 ('0 0 13 * FRI', 'UTC', '2026-01-01 00:00Z', '2026-01-02 00:00Z', 'both days restricted: Friday 2nd'),
 ('0 0 13 * 1', 'UTC', '2026-01-06 00:00Z', '2026-01-12 00:00Z', 'both days restricted: Monday 12th'),
 ('0 0 13 * 1', 'UTC', '2026-01-12 00:00Z', '2026-01-13 00:00Z', 'both days restricted: Tuesday 13th'),
 ('0 0 */10 * 1', 'UTC', '2026-01-01 00:00Z', '2026-05-11 00:00Z', 'day of month starts with *: both must match'),
 ('0 0 * * 1', 'UTC', '2026-01-07 00:00Z', '2026-01-12 00:00Z', 'Mondays'),
 ('0 0 * * MON-FRI', 'UTC', '2026-01-03 00:00Z', '2026-01-05 00:00Z', 'weekdays from a Saturday'),
 ('0 0 * * 5-7', 'UTC', '2026-01-05 00:00Z', '2026-01-09 00:00Z', 'Friday to Sunday (7) from a Monday'),
 ('0 0 * * 5-7', 'UTC', '2026-01-10 00:00Z', '2026-01-11 00:00Z', '7 is Sunday'),
 ('0 0 * * 7', 'UTC', '2026-01-05 00:00Z', '2026-01-11 00:00Z', '7 alone is Sunday'),
 ('0 0 * * sun', 'UTC', '2026-01-05 00:00Z', '2026-01-11 00:00Z', 'names in any case'),
 ('0 0 * * 7/3', 'UTC', '2026-01-05 00:00Z', '2026-01-11 00:00Z', 'day of week 7/3: Sunday only'),
 ('0 0 * * */3', 'UTC', '2026-01-05 00:00Z', '2026-01-07 00:00Z', 'day of week */3: Sunday, Wednesday, Saturday'),
 ('0 0 1 JAN-MAR/2 *', 'UTC', '2026-01-01 00:00Z', '2026-03-01 00:00Z', 'a range of month names with a step'),
 ('0 0 1 jun,Feb *', 'UTC', '2026-03-01 00:00Z', '2026-06-01 00:00Z', 'a list of month names'),
 ('*/15 * * * *', 'UTC', '2026-01-01 00:07Z', '2026-01-01 00:15Z', 'every 15 minutes'),
 ('5-10/2 * * * *', 'UTC', '2026-01-01 00:07Z', '2026-01-01 00:09Z', 'a range with a step'),
 ('5-10/2 * * * *', 'UTC', '2026-01-01 00:09Z', '2026-01-01 01:05Z', 'past the range: the next hour'),
 ('0 9-17/4 * * *', 'UTC', '2026-01-01 10:00Z', '2026-01-01 13:00Z', 'hours 9, 13, 17'),
 ('0 22/3 * * *', 'UTC', '2026-01-01 23:00Z', '2026-01-02 22:00Z', 'a/n runs to the end: only 22'),
 ('0,30 * * * *', 'UTC', '2026-01-01 00:31Z', '2026-01-01 01:00Z', 'a list'),
 ('* * * * *', 'UTC', '2026-01-01 00:00:30Z', '2026-01-01 00:01Z', 'every minute, from mid-minute'),
 ('@hourly', 'UTC', '2026-01-01 00:00Z', '2026-01-01 01:00Z', '@hourly'),
 ('@daily', 'UTC', '2026-01-01 00:00Z', '2026-01-02 00:00Z', '@daily'),
 ('@weekly', 'UTC', '2026-01-07 00:00Z', '2026-01-11 00:00Z', '@weekly: Sunday'),
 ('@monthly', 'UTC', '2026-01-15 00:00Z', '2026-02-01 00:00Z', '@monthly'),
 ('1 seconds', 'UTC', '2026-01-01 00:00:00.5Z', '2026-01-01 00:00:01Z', '1 seconds'),
 ('15 seconds', 'UTC', '2026-01-01 00:00:07Z', '2026-01-01 00:00:15Z', '15 seconds'),
 ('15 seconds', 'UTC', '2026-01-01 00:00:15Z', '2026-01-01 00:00:30Z', '15 seconds, strictly after'),
 ('59 seconds', 'UTC', '2026-01-01 00:00Z', '2026-01-01 00:00:43Z', '59 seconds: multiples since the epoch (1767225600 = 59 * 29952976 + 16)'),
 ('59 seconds', 'Europe/Berlin', '2026-01-01 00:00Z', '2026-01-01 00:00:43Z', 'N seconds ignore the time zone'),
 ('0 9 * * *', 'Asia/Kolkata', '2026-01-01 00:00Z', '2026-01-01 03:30Z', 'a zone without DST, +05:30'),
 ('0 0 * * *', 'Europe/Berlin', '2026-01-01 00:00Z', '2026-01-01 23:00Z', 'Berlin midnight in winter'),
 ('0 0 * * *', 'Europe/Berlin', '2026-07-01 00:00Z', '2026-07-01 22:00Z', 'Berlin midnight in summer'),
 ('30 1 * * *', 'Europe/Berlin', '2026-03-28 12:00Z', '2026-03-29 00:30Z', 'spring forward: 01:30 CET, before the gap'),
 ('30 2 * * *', 'Europe/Berlin', '2026-03-28 12:00Z', '2026-03-29 01:00Z', 'spring forward: 02:30 is skipped, fires at 03:00 CEST'),
 ('30 2 * * *', 'Europe/Berlin', '2026-03-29 01:00Z', '2026-03-30 00:30Z', 'spring forward: the next day, 02:30 CEST'),
 ('30 3 * * *', 'Europe/Berlin', '2026-03-28 12:00Z', '2026-03-29 01:30Z', 'spring forward: 03:30 CEST, after the gap'),
 ('* * * * *', 'Europe/Berlin', '2026-03-29 00:59Z', '2026-03-29 01:00Z', 'spring forward: the gap fires once'),
 ('* * * * *', 'Europe/Berlin', '2026-03-29 01:00Z', '2026-03-29 01:01Z', 'spring forward: then 03:01 CEST'),
 ('30 2 * * *', 'Europe/Berlin', '2026-10-24 12:00Z', '2026-10-25 00:30Z', 'fall back: 02:30 CEST, the first occurrence'),
 ('30 2 * * *', 'Europe/Berlin', '2026-10-25 00:30Z', '2026-10-26 01:30Z', 'fall back: not again at 02:30 CET'),
 ('*/30 * * * *', 'Europe/Berlin', '2026-10-25 00:30Z', '2026-10-25 02:00Z', 'fall back: the repeated hour does not fire again'),
 ('*/30 * * * *', 'Europe/Berlin', '2026-10-25 01:10Z', '2026-10-25 02:00Z', 'fall back: from inside the repeated hour'),
 ('0 2 * * *', 'America/New_York', '2026-03-07 12:00Z', '2026-03-08 07:00Z', 'New York spring forward: 02:00 is skipped, fires at 03:00 EDT'),
 ('0 2 * * *', 'America/New_York', '2026-03-08 07:00Z', '2026-03-09 06:00Z', 'New York: then 02:00 EDT'),
 ('30 1 * * *', 'America/New_York', '2026-10-31 12:00Z', '2026-11-01 05:30Z', 'New York fall back: 01:30 EDT, the first occurrence'),
 ('30 1 * * *', 'America/New_York', '2026-11-01 05:30Z', '2026-11-02 06:30Z', 'New York fall back: not again at 01:30 EST');
SELECT n, why, taskq._cron_next(cron, tz, after) IS NOT DISTINCT FROM expected AS ok
  FROM cron_cases ORDER BY n;
SELECT n, cron, tz, after, expected, taskq._cron_next(cron, tz, after) AS got
  FROM cron_cases WHERE taskq._cron_next(cron, tz, after) IS DISTINCT FROM expected;

-- Bad expressions and time zones: 22023 naming the field and the value.
SELECT c, public.expect_error(format('SELECT taskq._cron_next(%L, %L, now())', c, 'UTC'))
  FROM unnest(ARRAY['', '* * * *', '* * * * * *', '60 * * * *', '* 24 * * *', '* * 0 * *',
                    '* * 32 * *', '* * * 13 *', '* * * 0 *', '* * * * 8', '* * * JUNK *',
                    '* * * * MONDAY', '* * * * MON-', '*/0 * * * *', '5-1 * * * *',
                    '1,,2 * * * *', '*/x * * * *', '1/ * * * *', 'x * * * *', '@yearly',
                    '@', '0 seconds', '60 seconds', 'seconds', '5 minutes']) AS c;
SELECT public.expect_error($$SELECT taskq._cron_next('* * * * *', 'Mars/Olympus', now())$$);
SELECT public.expect_error($$SELECT taskq._cron_next('* * * * *', '', now())$$);
SELECT public.expect_error($$SELECT taskq._cron_next('* * * * *', 'UTC', 'infinity')$$);
SELECT public.expect_error($$SELECT taskq._cron_next(NULL, 'UTC', now())$$);

-- schedule(): the row, with next_tick the first tick after now().
SELECT * FROM taskq.schedules;
SELECT taskq.schedule('nightly', '0 2 * * *', '{"action": "report", "body": {"kind": "daily"}}',
                      'Europe/Berlin');
SELECT taskq.schedule('often', '*/5 * * * *', '{"action": "poll", "priority": 3}',
                      catch_up => 'all');
SELECT name, cron, time_zone, task, catch_up, last_tick,
       next_tick = taskq._cron_next(cron, time_zone, now()) AS next_is_first_tick,
       next_tick > now() AS in_future
  FROM taskq.schedules;
-- Nothing was inserted: the worker fires the ticks.
SELECT count(*) FROM taskq.tasks;

-- An update with the same cron and time zone keeps next_tick and last_tick
-- (a due tick is not lost by a repeated schedule()); the task and catch_up
-- change.
UPDATE taskq.schedule_registry SET next_tick = '2026-01-01 01:00Z', last_tick = '2026-01-01 00:00Z'
 WHERE name = 'nightly';
SELECT taskq.schedule('nightly', '0 2 * * *', '{"action": "report2"}', 'Europe/Berlin', 'none');
SELECT name, task, catch_up, last_tick, next_tick FROM taskq.schedules WHERE name = 'nightly';
-- Another cron (or time zone) starts from the first tick after now(); last_tick stays.
SELECT taskq.schedule('nightly', '0 3 * * *', '{"action": "report2"}', 'Europe/Berlin', 'none');
SELECT name, cron, last_tick, next_tick = taskq._cron_next('0 3 * * *', 'Europe/Berlin', now()) AS recomputed
  FROM taskq.schedules WHERE name = 'nightly';
UPDATE taskq.schedule_registry SET next_tick = '2026-01-01 01:00Z' WHERE name = 'nightly';
SELECT taskq.schedule('nightly', '0 3 * * *', '{"action": "report2"}', 'UTC', 'none');
SELECT name, time_zone, next_tick = taskq._cron_next('0 3 * * *', 'UTC', now()) AS recomputed
  FROM taskq.schedules WHERE name = 'nightly';

-- Names: 1 to 200 bytes, any characters.
SELECT taskq.schedule(repeat('n', 200), '@daily', '{"action": "x"}');
SELECT taskq.schedule('a/b c', '@daily', '{"action": "x"}');
SELECT length(name) FROM taskq.schedules ORDER BY name;

-- Bad arguments: 22023 (22004 for NULL), and nothing is stored.
SELECT count(*) AS before FROM taskq.schedule_registry \gset
SELECT public.expect_error(c) FROM unnest(ARRAY[
  $$SELECT taskq.schedule('', '@daily', '{"action": "x"}')$$,
  $$SELECT taskq.schedule(repeat('n', 201), '@daily', '{"action": "x"}')$$,
  $$SELECT taskq.schedule('bad', '61 * * * *', '{"action": "x"}')$$,
  $$SELECT taskq.schedule('bad', '0 0 30 2 *', '{"action": "x"}')$$,
  $$SELECT taskq.schedule('bad', '@daily', '{"action": "x"}', 'Nowhere/Town')$$,
  $$SELECT taskq.schedule('bad', '@daily', '{"action": "x"}', 'UTC', 'some')$$,
  $$SELECT taskq.schedule('bad', '@daily', '{"action": "x"}', 'UTC', 'LATEST')$$,
  $$SELECT taskq.schedule('bad', '@daily', '[{"action": "x"}]')$$,
  $$SELECT taskq.schedule('bad', '@daily', '"x"')$$,
  $$SELECT taskq.schedule('bad', '@daily', '{"action": "x", "id": "mine"}')$$,
  $$SELECT taskq.schedule('bad', '@daily', '{"action": "x", "not_before": "2030-01-01"}')$$,
  $$SELECT taskq.schedule('bad', '@daily', '{"action": "x", "to_signal_after": []}')$$,
  $$SELECT taskq.schedule('bad', '@daily', '{"action": "x", "to_signal_after": null}')$$,
  $$SELECT taskq.schedule('bad', '@daily', '{"body": {}}')$$,
  $$SELECT taskq.schedule('bad', '@daily', '{"action": "x", "max_tries": 0}')$$,
  $$SELECT taskq.schedule('bad', '@daily', '{"action": "x", "colour": "red"}')$$,
  $$SELECT taskq.schedule('bad', '@daily', '{"action": "x", "trigger": "sometimes"}')$$,
  $$SELECT taskq.schedule('bad', '@daily', '{"action": "x", "retry": {"delay": "1 s", "colour": 1}}')$$,
  $$SELECT taskq.schedule(NULL, '@daily', '{"action": "x"}')$$,
  $$SELECT taskq.schedule('bad', NULL, '{"action": "x"}')$$,
  $$SELECT taskq.schedule('bad', '@daily', NULL)$$,
  $$SELECT taskq.schedule('bad', '@daily', '{"action": "x"}', NULL)$$,
  $$SELECT taskq.schedule('bad', '@daily', '{"action": "x"}', 'UTC', NULL)$$
]) AS c;
-- The task's errors name the task of the first tick.
SELECT public.error_context($$SELECT taskq.schedule('ctx', '0 0 1 1 *', '{"action": "x", "max_tries": 0}')$$)
       ~ '^22023 / task "ctx/\d{4}-01-01T00:00:00Z" of argument "task"' AS names_the_tick;
SELECT count(*) = :before AS nothing_stored FROM taskq.schedule_registry;

-- unschedule(): whether one was removed.
SELECT taskq.unschedule('often'), taskq.unschedule('often'), taskq.unschedule('never was');
SELECT public.expect_error($$SELECT taskq.unschedule(NULL)$$);
SELECT left(name, 10) FROM taskq.schedules ORDER BY name;
SELECT taskq.unschedule(name) FROM taskq.schedules;
SELECT count(*) FROM taskq.schedules;
RESET timezone;
