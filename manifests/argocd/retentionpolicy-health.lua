-- Argo CD health of a RetentionPolicy (kafka-retention.io/RetentionPolicy). Argo CD runs
-- this with gopher-lua (Lua 5.1) and the object as the global `obj`.
--   no run yet, or the spec's generation not run yet  -> Progressing
--   Ready=False (invalid spec, Kafka unreachable, ...) -> Degraded, with the reason
--   Degraded=True (partitions that failed to apply)    -> Degraded
--   TombstonesAtRisk=True (a group may miss deletes)   -> Degraded
--   otherwise                                          -> Healthy; DataLoss, AtRisk,
--     OrphansFound and a late start are named in the message (past facts and warnings
--     that events and alerts carry; they do not make the policy broken)
local hs = {}

local function condition(conditions, kind)
  if conditions == nil then
    return nil
  end
  for _, c in ipairs(conditions) do
    if c.type == kind then
      return c
    end
  end
  return nil
end

local function said(c)
  return (c.reason or "") .. ": " .. (c.message or "")
end

local status = obj.status
local conditions = nil
if status ~= nil then
  conditions = status.conditions
end
local ready = condition(conditions, "Ready")
if ready == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the first run"
  return hs
end

local generation = obj.metadata and obj.metadata.generation
if generation ~= nil and ready.observedGeneration ~= nil and ready.observedGeneration < generation then
  hs.status = "Progressing"
  hs.message = "Generation " .. tostring(generation) .. " not run yet"
  return hs
end

if ready.status == "False" then
  hs.status = "Degraded"
  hs.message = said(ready)
  return hs
end

for _, kind in ipairs({"Degraded", "TombstonesAtRisk"}) do
  local c = condition(conditions, kind)
  if c ~= nil and c.status == "True" then
    hs.status = "Degraded"
    hs.message = kind .. ": " .. said(c)
    return hs
  end
end

hs.status = "Healthy"
local notes = {}
for _, kind in ipairs({"DataLoss", "AtRisk", "OrphansFound"}) do
  local c = condition(conditions, kind)
  if c ~= nil and c.status == "True" then
    table.insert(notes, kind .. " (" .. (c.reason or "") .. ")")
  end
end
local schedule = condition(conditions, "OnSchedule")
if schedule ~= nil and schedule.status == "False" then
  table.insert(notes, "late: " .. (schedule.message or ""))
end
if #notes > 0 then
  hs.message = said(ready) .. "; " .. table.concat(notes, "; ")
else
  hs.message = said(ready)
end
return hs
