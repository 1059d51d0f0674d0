import { Injectable } from '@angular/core';

export interface Session {
  accessToken: string;
  refreshToken: string;
  expiresAt: number;
}

@Injectable({ providedIn: 'root' })
export class AuthService {
  private readonly tokenKey = 'session';
  private password: string | null = null;

  setPassword(password: string): void {
    this.password = password;
  }

  isExpired(session: Session): boolean {
    return Date.now() > session.expiresAt;
  }
}
