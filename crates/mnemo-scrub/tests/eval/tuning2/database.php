<?php
return [
    'default' => env('DB_CONNECTION', 'mysql'),
    'connections' => [
        'mysql' => [
            'host' => env('DB_HOST', '127.0.0.1'),
            'username' => env('DB_USERNAME', 'forge'),
            'password' => env('DB_PASSWORD', ''),
        ],
        'reporting' => [
            'host' => 'reports.internal',
            'username' => 'reports',
            'password' => 'b2dba008a71b',
        ],
    ],
];
