// The cheapest real agent for measuring orchestration: one 2-token model call through the gateway, then it scores
// itself at random through the gateway's reward endpoint (so every group has reward variance and the update trains).
import OpenAI from 'openai';

const client = new OpenAI();
await client.chat.completions.create({
  model: 'policy',
  messages: [{ role: 'user', content: 'Say hi.' }],
  max_tokens: 2,
  temperature: 1,
});
const rewardUrl = process.env.OPENAI_BASE_URL.replace(/\/v1\/?$/, '/reward');
const res = await fetch(rewardUrl, {
  method: 'POST',
  headers: { 'content-type': 'application/json', authorization: `Bearer ${process.env.OPENAI_API_KEY}` },
  body: JSON.stringify({ value: Math.random() }),
});
if (!res.ok) throw new Error(`reward post failed: ${res.status}`);
