-- include: create, index
-- A create and its index step in one script, on a single Redis only (as commit_indexed.lua).
-- KEYS: 1 create.lua's, then index.lua's 12 keys of the table's index shard
-- ARGV: 1 table id, then create.lua's ARGV (its marker time 'inline')
-- Returns what create.lua returns; when it created the table (or this very call was sent
-- again), the index step has applied its state too.
local index_keys = {}
for k = 2, #KEYS do index_keys[k - 1] = KEYS[k] end
local args = {}
for a = 2, #ARGV do args[a - 1] = ARGV[a] end
local reply = create_step({KEYS[1]}, args)
if reply[1] == 1 then
  index_step(index_keys, {'1', ARGV[1], 1, unpack(reply, 3, 9)})
end
return reply
