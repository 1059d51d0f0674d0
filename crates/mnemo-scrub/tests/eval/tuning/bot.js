const { Client, GatewayIntentBits } = require('discord.js');
const client = new Client({ intents: [GatewayIntentBits.Guilds] });
client.once('ready', () => console.log('ready'));
client.login('du5wKMdmP5SvUjhePoaYV7pV.iSfsSJ.4XxDK3PFdJsXWyq7DYBa-NkIMvUDXFvmCatCVr');
