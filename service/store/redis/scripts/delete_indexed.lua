-- include: delete, index
-- A delete and its index step in one script, on a single Redis only (as commit_indexed.lua).
-- KEYS: 1-4 delete.lua's, then index.lua's 12 keys of the table's index shard
-- ARGV: 1 table id, 2 expected version
-- Returns what delete.lua returns; when it deleted the table, the table is gone from every
-- index too.
local index_keys = {}
for k = 5, #KEYS do index_keys[k - 4] = KEYS[k] end
local reply = delete_step({KEYS[1], KEYS[2], KEYS[3], KEYS[4]}, {ARGV[2], 'inline', '0'})
if reply == 1 then
  index_step(index_keys, {'1', ARGV[1], '0', '', '', '', '', '', '', ''})
end
return reply
